//! diagnosis (work in progress)
