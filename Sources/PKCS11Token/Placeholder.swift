internal import CPKCS11
