"""The conversion job both front doors run: queue, worker, validation, card, Hub publishing."""
