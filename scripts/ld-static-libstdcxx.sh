#!/bin/sh
# The linker of the PKCS#11 module (Package.swift, P11KeychainModule): ld.gold, with GCC's
# C++ runtime linked in statically instead of as libstdc++.so.6.
#
# The Swift runtime that -static-stdlib links into the module is C++, and the toolchain's
# static-stdlib-args.lnk names it as -lstdc++, which makes every host that loads the module
# load libstdc++.so.6 too: about 0.8 ms of a C host's dlopen (2.2 MB mapped, its
# relocations and its initialisers). The module's few uses of it (operator new, a mutex,
# a string) are linked in instead; --exclude-libs ALL, also in that list, keeps them out
# of the module's exported symbols.
#
# SwiftPM links every product with -rpath=$ORIGIN. The module needs no library beside it (its
# dependencies are the system's), and that run path made a host's dlopen look for the
# module's first dependency in a dozen directories beside the module first (an open and a
# stat each, about 20 µs) and would prefer a library planted there: it is left out. Every
# other argument goes to ld.gold unchanged.
for argument do
    shift
    case $argument in
    -lstdc++) argument=-l:libstdc++.a ;;
    '-rpath=$ORIGIN') continue ;;
    esac
    set -- "$@" "$argument"
done
exec ld.gold "$@"
