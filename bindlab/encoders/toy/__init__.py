"""The toy vision–language models this project trains and ships in ``bindlab/assets``, as an encoder backend.

:mod:`~bindlab.encoders.toy.backend` registers ``toy:<name>`` and loads a model folder; :mod:`~bindlab.encoders.toy.models`
holds the torch modules (text and image towers, heads); :mod:`~bindlab.encoders.toy.tokenizer` the word tokenizer.
Training them is :mod:`bindlab.train.toy`.
"""
