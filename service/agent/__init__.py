"""One agent interface (base.Agent), two brains: offline (parser + templates) and LLM (LangChain)."""
