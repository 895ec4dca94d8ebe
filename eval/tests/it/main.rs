//! The eval crate's tests: checklist and validator scores on fixed workflows, the meter over
//! fixed events, the JSONL row, the summary and compare over fixed rows, the shipped sets, one
//! end-to-end run on the scripted model (plumbing, not quality), and the n8n scores against a
//! real n8n (skipped without one).

mod cases;
mod compare;
mod end_to_end;
mod fixtures;
mod meter;
mod n8n;
mod rows;
mod scoring;
mod summary;
