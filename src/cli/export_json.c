// SPDX-License-Identifier: MIT
/*
 * export_json.c - `export -j`: the Prometheus exposition export renders,
 * as one JSON document: {"metrics":[{"name","labels":{...},"value"}]}.
 *
 * Read back from the text, so the document and the exposition can never
 * disagree.  Values keep their digits when they already are JSON numbers
 * (counters past 2^53 stay exact); +Inf, -Inf and NaN become strings.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$ */
static bool json_number(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && s[i] == '-')
		i++;
	if (i == n || s[i] < '0' || s[i] > '9')
		return false;
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i < n && s[i] == '.') {
		if (++i == n || s[i] < '0' || s[i] > '9')
			return false;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		if (++i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i == n || s[i] < '0' || s[i] > '9')
			return false;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	return i == n;
}

static void value_json(FILE *f, const char *v, size_t n)
{
	char buf[64];
	double d;

	if (json_number(v, n)) {
		fwrite(v, 1, n, f);
		return;
	}
	snprintf(buf, sizeof(buf), "%.*s", (int)(n < 63 ? n : 63), v);
	d = strtod(buf, NULL);
	if (isfinite(d))
		fprintf(f, "%.17g", d);
	else
		cli_json_str(f, buf);
}

/* {k="v",...} at *p (after '{') as JSON members; *p ends past the '}'. */
static int labels_json(FILE *f, const char **p)
{
	const char *s = *p;
	char key[256], val[1024];
	int n = 0;

	while (*s && *s != '}') {
		size_t k = 0, v = 0;

		while (*s == ',' || *s == ' ')
			s++;
		if (*s == '}')
			break;
		while (*s && *s != '=' && k + 1 < sizeof(key))
			key[k++] = *s++;
		key[k] = 0;
		if (s[0] != '=' || s[1] != '"')
			return -1;
		for (s += 2; *s && *s != '"'; s++) {
			char ch = *s;

			if (ch == '\\' && s[1])
				ch = *++s == 'n' ? '\n' : *s;
			if (v + 1 < sizeof(val))
				val[v++] = ch;
		}
		val[v] = 0;
		if (*s++ != '"')
			return -1;
		fputs(n++ ? "," : "", f);
		cli_json_str(f, key);
		fputc(':', f);
		cli_json_str(f, val);
	}
	if (*s != '}')
		return -1;
	*p = s + 1;
	return 0;
}

int cli_prom_json(FILE *f, const char *text)
{
	const char *line = text;
	int n = 0;

	fputs("{\"metrics\":[", f);
	for (; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		const char *p = line, *name = line, *v;
		size_t name_len, v_len;

		if (*line == '#' || *line == '\n')
			continue;
		while (*p && *p != '{' && *p != ' ' && *p != '\n')
			p++;
		name_len = (size_t)(p - name);
		fprintf(f, "%s{\"name\":\"%.*s\",\"labels\":{", n++ ? "," : "", (int)name_len, name);
		if (*p == '{') {
			p++;
			if (labels_json(f, &p))
				return -1;
		}
		fputs("},\"value\":", f);
		while (*p == ' ')
			p++;
		for (v = p; *p && *p != ' ' && *p != '\n'; p++)
			;
		v_len = (size_t)(p - v);
		if (!v_len)
			return -1;
		value_json(f, v, v_len);
		fputc('}', f);
	}
	fputs("]}\n", f);
	return 0;
}
