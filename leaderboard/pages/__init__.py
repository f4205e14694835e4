"""The HTML pages: views, forms and template tags (no models)."""
