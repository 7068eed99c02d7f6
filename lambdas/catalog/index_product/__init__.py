"""IndexProduct: the catalog example's one step, writing a product-change message into the search index."""
