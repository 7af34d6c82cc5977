"""The HTTP server (the `serve` extra: FastAPI + uvicorn + prometheus-client); no model code of its own.

requests.py  one request from bytes to model input: body limits, parsing, validation, encoding (4xx)
batcher.py   BatchingTranslator: requests from many clients translated together on one worker thread
served_models.py  the models of one server, and which of them translates each text (by language pair)
security.py  the API key, CORS, the warning for a server reachable from the network
metrics.py   GET /metrics in Prometheus' text format
app.py       the FastAPI application: /translate, /health, /stats, /metrics, / (page.html, a plain form)
libretranslate.py  the LibreTranslate API under /libretranslate/, for the clients that speak it
libretranslate_files.py  its file translation: uploads, and the translated files kept for their download
"""
