package dev.varve.snapshot;

/** Closing what an open got through before it failed, so that a refused open leaves no file open. */
final class Closing {
    private Closing() {
    }

    /** Adds {@code part} to {@code opened} and returns it. */
    static <T extends AutoCloseable> T track(java.util.List<AutoCloseable> opened, T part) {
        opened.add(part);
        return part;
    }

    /** Closes every one of {@code opened} (nulls skipped), adding their failures to {@code cause}, which the caller throws. */
    static void closeAll(Exception cause, Iterable<? extends AutoCloseable> opened) {
        for (AutoCloseable c : opened) {
            if (c == null) continue;
            try {
                c.close();
            } catch (Exception suppressed) {
                cause.addSuppressed(suppressed);
            }
        }
    }
}
