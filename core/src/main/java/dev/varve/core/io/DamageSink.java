package dev.varve.core.io;

import java.nio.file.Path;

/** Receives each damage an offline check finds: which file, at which byte offset, and what is wrong there. */
@FunctionalInterface
public interface DamageSink {
    /** One damaged spot. */
    void damage(Path file, long offset, String what);
}
