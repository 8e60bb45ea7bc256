package dev.varve.core.io;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * Every file and directory under a root with its size, modification time and CRC32C, for tests that prove an
 * operation changed nothing on disk: two fingerprints are equal only if no file was created, deleted, renamed,
 * written or touched. (CRC32C, not a cryptographic digest: the changes to catch are the code's own, not forged ones,
 * and the tests that fingerprint whole stores run in JVMs that compile with C1 only, where SHA-256 has no intrinsic
 * and took seconds a store.)
 */
public final class DirectoryFingerprint {
    private DirectoryFingerprint() {
    }

    /** Relative path -> "dir" or "size mtime crc32c". */
    public static Map<String, String> of(Path root) {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String rel = root.relativize(p).toString();
                if (Files.isDirectory(p)) out.put(rel + "/", "dir " + Files.getLastModifiedTime(p).toMillis());
                else out.put(rel, Files.size(p) + " " + Files.getLastModifiedTime(p).toMillis() + " " + crc32c(p));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    private static String crc32c(Path p) throws IOException {
        try (InputStream in = Files.newInputStream(p)) {
            CRC32C crc = new CRC32C();
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) crc.update(buf, 0, n);
            return Long.toHexString(crc.getValue());
        }
    }
}
