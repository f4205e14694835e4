def solution(tensor):
    # Forgets the communication: each rank returns only its own contribution.
    return tensor.clone()
