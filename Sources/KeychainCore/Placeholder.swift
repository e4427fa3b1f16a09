public enum KeychainCorePlaceholder {}
