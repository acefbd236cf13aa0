"""Decision: the six criteria per offer (``criteria``), then the verdict and ranking (``verdict``).

Filter first, then rank (skypilot ``sky/optimizer.py`` habit): only offers with all six criteria
``acceptable`` are ranked; conditional offers estimated to fit get a provisional
rank, labelled so.
"""
