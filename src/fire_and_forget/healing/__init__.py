"""healing"""
