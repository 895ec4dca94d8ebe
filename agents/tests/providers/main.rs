//! Anthropic and OpenAI providers against loopback servers started by the tests (wiremock, and
//! raw TCP servers for streams that stall): streaming, tool calls, request shapes, error
//! mapping, retries (of the request and of the stream), timeouts, output truncation and
//! cancellation. No network.

mod anthropic;
mod openai;
mod stream_retries;
mod support;
mod timeouts;
mod truncation;
