"""pyhudi.logformat"""
