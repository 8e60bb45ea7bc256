package dev.varve.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** Range checks whose {@link IllegalArgumentException} names the field, the allowed range and the value. */
final class ConfigChecks {

    static final long KiB = 1L << 10;
    static final long MiB = 1L << 20;
    static final long GiB = 1L << 30;
    static final long TiB = 1L << 40;

    private ConfigChecks() {
    }

    static <T> T required(String field, T value) {
        if (value == null) {
            throw new IllegalArgumentException(field + " is required");
        }
        return value;
    }

    static void intRange(String field, int value, int min, int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(field + " must be in [" + min + ", " + max + "], was " + value);
        }
    }

    static void powerOfTwo(String field, int value, int min, int max) {
        if (value < min || value > max || Integer.bitCount(value) != 1) {
            throw new IllegalArgumentException(
                    field + " must be a power of two in [" + min + ", " + max + "], was " + value);
        }
    }

    static void byteRange(String field, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(
                    field + " must be in [" + bytes(min) + ", " + bytes(max) + "], was " + value + " bytes");
        }
    }

    static void multipleOf(String field, long value, String unitName, long unit) {
        if (value % unit != 0) {
            throw new IllegalArgumentException(
                    field + " must be a multiple of " + unitName + " (" + unit + "), was " + value + " bytes");
        }
    }

    static void durationRange(String field, Duration value, Duration min, Duration max) {
        required(field, value);
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            throw new IllegalArgumentException(
                    field + " must be in [" + duration(min) + ", " + duration(max) + "], was " + value);
        }
    }

    static void doubleRange(String field, double value, double min, double max) {
        if (!(value >= min && value <= max)) { // also rejects NaN
            throw new IllegalArgumentException(field + " must be in [" + min + ", " + max + "], was " + value);
        }
    }

    /** Formats a byte count with the largest binary unit that divides it exactly, e.g. {@code 8 MiB}. */
    static String bytes(long n) {
        String[] units = {"TiB", "GiB", "MiB", "KiB"};
        long[] sizes = {TiB, GiB, MiB, KiB};
        for (int i = 0; i < units.length; i++) {
            if (n != 0 && n % sizes[i] == 0) {
                return n / sizes[i] + " " + units[i];
            }
        }
        return n + " bytes";
    }

    /** Formats a duration in the short syntax of the properties file when exact, e.g. {@code 1ms}, {@code 1d}. */
    static String duration(Duration d) {
        long ms = d.toMillis();
        if (!d.equals(Duration.ofMillis(ms))) {
            return d.toString();
        }
        long[] sizes = {86_400_000L, 3_600_000L, 60_000L, 1_000L};
        String[] units = {"d", "h", "m", "s"};
        for (int i = 0; i < sizes.length; i++) {
            if (ms != 0 && ms % sizes[i] == 0) {
                return ms / sizes[i] + units[i];
            }
        }
        return ms + "ms";
    }

    /**
     * An archive directory apart from the store's: not {@code path} itself, not inside one of the store's own
     * directories (their files would be taken for damage), and not an ancestor of {@code path}.
     */
    static void archiveApart(Path path, Path archivePath, List<String> storeDirs) {
        Path p = path.toAbsolutePath().normalize();
        Path a = archivePath.toAbsolutePath().normalize();
        if (a.equals(p)) throw new IllegalArgumentException("archivePath must differ from path, was " + archivePath);
        if (p.startsWith(a)) {
            throw new IllegalArgumentException("archivePath must not contain path " + path + ", was " + archivePath);
        }
        for (String own : storeDirs) {
            if (a.startsWith(p.resolve(own))) {
                throw new IllegalArgumentException("archivePath must not lie inside the store's own directory "
                        + p.resolve(own) + ", was " + archivePath);
            }
        }
    }
}
