/* The Linux kernel key retention service (keyrings(7)), through libkeyutils: the session
 * keyring holds what `p11keychain unlock` leaves for the login session
 * (KeychainCore/SessionKeyring.swift). */
#include <keyutils.h>
