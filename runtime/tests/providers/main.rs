//! Anthropic and OpenAI providers against loopback servers started by the tests (wiremock, and
//! a raw TCP server for a stream that stalls): streaming, tool calls, request shapes, error
//! mapping, retries and cancellation. No network.

mod anthropic;
mod openai;
mod support;
