class A:
    def f(self):
        """doc"""
        return [x for x in ()]

async def g():
    pass
