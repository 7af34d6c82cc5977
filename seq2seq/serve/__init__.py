"""The HTTP server (the `serve` extra: FastAPI + uvicorn); no model code of its own.

batcher.py   BatchingTranslator: requests from many clients translated together on one worker thread
app.py       the FastAPI application: /translate, /health, /stats, / (page.html, a plain HTML form)
"""
