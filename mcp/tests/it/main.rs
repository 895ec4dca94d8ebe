mod client;
mod server;
