package dev.varve.cli;

/** The store cannot be used: not a store, missing, open for writing elsewhere, unreadable (exit code 2). */
final class UnusableStoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UnusableStoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
