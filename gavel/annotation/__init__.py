"""Human annotation app (extraction review, value comparison, style rating). Needs the ``annotation`` extra.
gavel's core never imports this package; it reads the app's exports (see gavel.metrics.metaeval)."""
