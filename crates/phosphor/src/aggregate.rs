//! In-process aggregate points: sums and log-linear histograms.
