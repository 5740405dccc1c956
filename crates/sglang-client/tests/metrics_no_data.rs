//! Issue 13 item 7: a `/metrics` that answers 200 with an HTML page is "no
//! data" (an error naming the URL and the first bad line), never zeros.

use sglang_client::{ClientConfig, ClientError, SglangClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serves `body` with HTTP 200 to every connection.
async fn serve_once(body: &'static str) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes()).await;
            let _ = s.write_all(body.as_bytes()).await;
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn an_html_page_is_no_data() {
    let url = serve_once("<html>\n<body>Login required</body>\n</html>\n").await;
    let c = SglangClient::new(ClientConfig::new(&url)).unwrap();
    let e = c.metrics().await.unwrap_err();
    assert_eq!(e.kind(), "no_data");
    match &e {
        ClientError::NoMetrics {
            url: u,
            lines,
            problems,
            first,
        } => {
            assert_eq!(u, &format!("{url}/metrics"));
            assert_eq!((*lines, *problems), (3, 3));
            assert!(first.contains("line 1: bad metric name"), "{first}");
        }
        other => panic!("expected NoMetrics, got {other:?}"),
    }
    assert!(e.to_string().contains("holds no SGLang metrics"), "{e}");
}
