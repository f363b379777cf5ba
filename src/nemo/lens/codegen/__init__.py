"""Span-group code generator: schema (TOML) -> validate -> view model -> Jinja2 templates."""
