def solve(tensor):
    return tensor
