/* The Linux kernel key retention service (keyrings(7)), through libkeyutils: the session
 * keyring holds what `p11keychain unlock` leaves for the login session
 * (KeychainCore/SessionKeyring.swift). The library is not linked: KeychainCore/Keyutils.swift
 * opens libkeyutils.so.1 when the keyring is first used, through these function-pointer
 * types, which the C compiler takes from keyutils.h's own declarations. */
#include <keyutils.h>

typedef __typeof__(add_key) *p11k_add_key;
typedef __typeof__(keyctl_describe_alloc) *p11k_keyctl_describe_alloc;
typedef __typeof__(keyctl_get_keyring_ID) *p11k_keyctl_get_keyring_ID;
typedef __typeof__(keyctl_invalidate) *p11k_keyctl_invalidate;
typedef __typeof__(keyctl_link) *p11k_keyctl_link;
typedef __typeof__(keyctl_read) *p11k_keyctl_read;
typedef __typeof__(keyctl_revoke) *p11k_keyctl_revoke;
typedef __typeof__(keyctl_search) *p11k_keyctl_search;
typedef __typeof__(keyctl_set_timeout) *p11k_keyctl_set_timeout;
typedef __typeof__(keyctl_setperm) *p11k_keyctl_setperm;
typedef __typeof__(keyctl_unlink) *p11k_keyctl_unlink;
