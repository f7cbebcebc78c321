"""HTTP routers of the service, one per concern (chat, OpenAI-compatible, estimate, catalog, health, web)."""
