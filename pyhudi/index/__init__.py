"""pyhudi.index"""
