package dev.varve.core.io;

/**
 * Closes several resources so that a failing one never keeps the others open: every one is closed, the first
 * failure is thrown and the later ones are attached to it as suppressed.
 */
public final class Closeables {
    private Closeables() {
    }

    /** Closes each of {@code resources} in order (nulls skipped); rethrows the first failure once all were tried. */
    public static void closeAll(AutoCloseable... resources) {
        RuntimeException first = null;
        for (AutoCloseable c : resources) {
            if (c == null) continue;
            try {
                c.close();
            } catch (Exception e) {
                RuntimeException wrapped = e instanceof RuntimeException r ? r
                        : new StorageException("cannot close " + c + ": " + e.getMessage(), null, e);
                if (first == null) first = wrapped;
                else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }

    /**
     * Closes {@code resources} (nulls skipped) after {@code cause} stopped the work that opened them, adding their
     * failures to {@code cause}, which the caller throws: a refused open leaves nothing open.
     */
    public static void closeAfter(Exception cause, AutoCloseable... resources) {
        try {
            closeAll(resources);
        } catch (RuntimeException failed) {
            cause.addSuppressed(failed);
        }
    }
}
