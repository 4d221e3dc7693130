"""The core: the server and its lifecycle, model configs and their rules, the REST client, tensors, errors,
the model catalogue, images and samples, the lesson texts. It imports nothing from tools, labs or cli."""
