package dev.varve.core.util;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Paths as the file system resolves them, for checks that two directories do not overlap. */
public final class RealPaths {
    private RealPaths() {
    }

    /**
     * {@code p} absolute, with its longest existing prefix's symbolic links followed and the rest appended as written:
     * a directory that does not exist yet is where its parent really is. Comparing paths as written misses a link
     * that makes one directory lie inside, or be, another.
     */
    public static Path of(Path p) {
        Path abs = p.toAbsolutePath(); // not normalized first: "link/.." is where the link's target's parent is, as the OS goes
        Path existing = abs;
        while (existing != null && !Files.exists(existing)) existing = existing.getParent();
        if (existing == null) return abs.normalize();
        try {
            return existing.toRealPath().resolve(existing.relativize(abs)).normalize();
        } catch (IOException e) {
            return abs.normalize(); // unreadable: the open that follows names what it cannot reach
        }
    }
}
