//! The dry run: recorded model answers and recorded provider bodies under
//! `fixtures/job-agent-chat/`.
