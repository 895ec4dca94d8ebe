mod client;
