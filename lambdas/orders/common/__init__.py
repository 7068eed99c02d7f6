"""Code shared by the order saga's Lambda functions: errors, order model, observability, AWS access."""
