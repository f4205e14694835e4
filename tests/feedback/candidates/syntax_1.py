def solution(tensor)
    return tensor
