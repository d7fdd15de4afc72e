"""pyhudi.config"""
