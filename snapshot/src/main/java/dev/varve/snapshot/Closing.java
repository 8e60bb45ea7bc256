package dev.varve.snapshot;

import dev.varve.core.io.Closeables;

import java.util.ArrayList;
import java.util.List;

/** Closing what an open got through before it failed, so that a refused open leaves no file open. */
final class Closing {
    private Closing() {
    }

    /** Adds {@code part} to {@code opened} and returns it. */
    static <T extends AutoCloseable> T track(List<AutoCloseable> opened, T part) {
        opened.add(part);
        return part;
    }

    /** Closes every one of {@code opened} (nulls skipped), adding their failures to {@code cause}, which the caller throws. */
    static void closeAll(Exception cause, Iterable<? extends AutoCloseable> opened) {
        List<AutoCloseable> all = new ArrayList<>();
        opened.forEach(all::add);
        Closeables.closeAfter(cause, all.toArray(new AutoCloseable[0]));
    }
}
