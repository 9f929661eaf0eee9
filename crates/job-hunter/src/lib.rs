//! The job-hunting pipeline (spec 000).
