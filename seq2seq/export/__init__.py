"""Converters to inference engines; each refuses, by name, what its engine cannot express.

ctranslate2.py   a checkpoint -> a CTranslate2 model directory (fp32, int8, bf16), with our tokenizers: an
                 encoder-decoder as a TransformerSpec (ctranslate2.Translator), a causal decoder-only
                 model as a TransformerDecoderModelSpec (ctranslate2.Generator)
argos.py         a checkpoint -> an Argos Translate package (.argosmodel: ctranslate2.py's model directory,
                 the sentencepiece model, a sentence splitter), which argostranslate and LibreTranslate
                 install and run offline
argos_sentences.py  the package's sentence splitter: punctuation rules written as a MiniSBD model (ONNX)
"""
