package dev.varve.config;

import java.time.Duration;

/**
 * The value syntax of the {@code varve.*} properties, for a tool that takes sizes and durations on its command line:
 * one syntax for both, so that what an operator writes in a properties file reads the same as an option.
 */
public final class ConfigValues {
    private ConfigValues() {
    }

    /**
     * A byte count, optionally with a binary suffix {@code k}, {@code m}, {@code g} or {@code t}, case-insensitive:
     * {@code 64m} is 64 MiB. A negative or fractional count is refused.
     *
     * @throws IllegalArgumentException naming the text and the syntax expected
     */
    public static long size(String text) {
        return ConfigProperties.parseSize(text);
    }

    /**
     * An ISO-8601 duration ({@code PT30S}) or a whole number with unit ms, s, m, h or d ({@code 150ms}).
     *
     * @throws IllegalArgumentException naming the text and the syntax expected
     */
    public static Duration duration(String text) {
        return ConfigProperties.parseDuration(text);
    }
}
