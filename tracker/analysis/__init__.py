"""Stage 3: facts to answers: the index, call graph, algorithms, roles, the interface each
algorithm requires, and which model classes meet it. Every module here decides what a
snapshot says, so its text is part of the snapshot builder's identity.
"""
