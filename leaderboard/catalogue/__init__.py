"""The 87 problems and the hardware profiles (queues) jobs run on."""
