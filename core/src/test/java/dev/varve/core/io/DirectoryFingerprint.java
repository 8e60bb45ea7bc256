package dev.varve.core.io;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Every file and directory under a root with its size, modification time and SHA-256, for tests that prove an
 * operation changed nothing on disk: two fingerprints are equal only if no file was created, deleted, renamed,
 * written or touched.
 */
public final class DirectoryFingerprint {
    private DirectoryFingerprint() {
    }

    /** Relative path -> "dir" or "size mtime sha256". */
    public static Map<String, String> of(Path root) {
        Map<String, String> out = new TreeMap<>();
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : (Iterable<Path>) s::iterator) {
                String rel = root.relativize(p).toString();
                if (Files.isDirectory(p)) out.put(rel + "/", "dir " + Files.getLastModifiedTime(p).toMillis());
                else out.put(rel, Files.size(p) + " " + Files.getLastModifiedTime(p).toMillis() + " " + sha256(p));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    private static String sha256(Path p) throws IOException {
        try (InputStream in = Files.newInputStream(p)) {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            byte[] buf = new byte[1 << 16];
            for (int n; (n = in.read(buf)) > 0; ) md.update(buf, 0, n);
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
