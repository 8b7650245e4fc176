"""One module per section of the page, in page order; each has `build(...) -> Section`."""
