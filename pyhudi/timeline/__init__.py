"""pyhudi.timeline"""
