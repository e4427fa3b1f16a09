import Foundation

#if canImport(Glibc)
    import Glibc
#endif

exit(Tool.main(CommandLine.arguments, environment: ProcessInfo.processInfo.environment))
