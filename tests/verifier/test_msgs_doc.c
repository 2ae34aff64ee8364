/*
 * test_msgs_doc.c - docs/verifier.md lists every verifier message, and
 * every message has a reason, meaning and hint, all distinct reasons.
 *
 * usage: test_msgs_doc DOCS/verifier.md
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "text/rawprog.h"
#include "verifier/msgs.h"

int main(int argc, char **argv)
{
	char *doc = NULL;
	size_t len;

	if (argc != 2 || nbpf_read_file(argv[1], &doc, &len)) {
		fprintf(stderr, "usage: test_msgs_doc docs/verifier.md\n");
		return 2;
	}
	for (int i = 0; i < VM_COUNT; i++) {
		char row[300];

		CHECK_MSG(nbpf_vmsgs[i].reason && nbpf_vmsgs[i].meaning && nbpf_vmsgs[i].hint,
			  "message %d incomplete", i);
		if (!nbpf_vmsgs[i].reason)
			continue;
		snprintf(row, sizeof(row), "| `%s` |", nbpf_vmsgs[i].reason);
		CHECK_MSG(strstr(doc, row) != NULL, "docs/verifier.md lacks \"%s\"", nbpf_vmsgs[i].reason);
		for (int j = 0; j < i; j++)
			CHECK_MSG(strcmp(nbpf_vmsgs[i].reason, nbpf_vmsgs[j].reason) != 0,
				  "duplicate reason \"%s\"", nbpf_vmsgs[i].reason);
	}
	free(doc);
	return check_summary("verifier_messages_doc");
}
