/*
 * The GCE metadata server, as far as credentials need it
 * (docs/cloud-tpu-api.md section 7): every request must carry
 * "Metadata-Flavor: Google" and every answer carries it back. Clients point
 * here with GCE_METADATA_HOST=127.0.0.1:PORT.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/xalloc.h"

#define PREFIX "/computeMetadata/v1/"
#define SA PREFIX "instance/service-accounts/default/"
#define CLOUD_PLATFORM "https://www.googleapis.com/auth/cloud-platform"

static char *sa_email(void)
{
	return xasprintf("%s-compute@developer.gserviceaccount.com", fg_opt.project_number);
}

int fg_metadata_serve(struct fg_req *r)
{
	const char *p = r->path;
	const char *flavor;

	if (strcmp(p, "/") && strncmp(p, "/computeMetadata/", 17))
		return 0;
	fg_reply_header(r, "Metadata-Flavor", "Google");
	flavor = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Metadata-Flavor");
	if (!flavor || strcmp(flavor, "Google")) {
		fg_reply_text(r, 403, "text/plain; charset=utf-8",
			      "Missing Metadata-Flavor:Google header.\n");
		return 1;
	}
	if (strcmp(r->method, "GET")) {
		fg_reply_text(r, 405, "text/plain; charset=utf-8", "Method not allowed.\n");
		return 1;
	}
	if (!strcmp(p, "/") || !strcmp(p, PREFIX) || !strcmp(p, "/computeMetadata/")) {
		fg_reply_text(r, 200, "application/text", "computeMetadata/\n");
	} else if (!strcmp(p, SA "token")) {
		fg_lock();
		char *t = fg_token_issue();
		fg_unlock();
		fg_reply_json(r, 200, json_pack("{s:s, s:i, s:s}", "access_token", t, "expires_in",
						(int)fg_opt.token_ttl, "token_type", "Bearer"));
		free(t);
	} else if (!strcmp(p, SA) || !strcmp(p, PREFIX "instance/service-accounts/default")) {
		char *email = sa_email();
		fg_reply_json(r, 200, json_pack("{s:[s], s:s, s:[s]}", "aliases", "default", "email",
						email, "scopes", CLOUD_PLATFORM));
		free(email);
	} else if (!strcmp(p, SA "email")) {
		char *email = sa_email();
		fg_reply_text(r, 200, "application/text", email);
		free(email);
	} else if (!strcmp(p, SA "scopes")) {
		fg_reply_text(r, 200, "application/text", CLOUD_PLATFORM "\n");
	} else if (!strcmp(p, PREFIX "project/project-id")) {
		fg_reply_text(r, 200, "application/text", fg_opt.project);
	} else if (!strcmp(p, PREFIX "project/numeric-project-id")) {
		fg_reply_text(r, 200, "application/text", fg_opt.project_number);
	} else {
		fg_reply_text(r, 404, "text/html; charset=UTF-8", "Not Found\n");
	}
	return 1;
}
