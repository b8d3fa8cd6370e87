"""Local fake model servers (127.0.0.1 only) speaking the OpenAI, Anthropic and Ollama wire
formats."""
