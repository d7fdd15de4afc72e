"""pyhudi.storage"""
