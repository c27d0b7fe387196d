"""HTTP side: app factory, routes, middlewares, SSE, OpenAPI, request schemas."""
